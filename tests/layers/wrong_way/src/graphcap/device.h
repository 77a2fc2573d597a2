// A public header of the wrong-way fixture (check_layers.cmake). Never compiled.
#pragma once
