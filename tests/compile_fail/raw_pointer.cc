// Must not compile in the host build: a raw pointer parameter could not be checked.
#include <graphcap/kernel.h>

GRAPHCAP_KERNEL(scale, (float* x, float a)) { x[0] *= a; }
