// MockDriver's constructor, destructor and default delegation, compiled once for builds that define
// GRAPHCAP_MOCK_DRIVER_OUT_OF_LINE (graphcap's own tests); see mock_driver.h.
#define GRAPHCAP_MOCK_DRIVER_DEFINE
#include <graphcap/fake/mock_driver.h>
