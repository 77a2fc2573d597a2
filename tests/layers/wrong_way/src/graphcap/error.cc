// A wrong-way include for check_layers.cmake to catch: the vocabulary layer naming a public
// header. Never compiled.
#include <graphcap/device.h>
