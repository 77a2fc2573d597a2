// The fake naming graphcap above DriverApi, for check_layers.cmake to catch. Never compiled.
#pragma once

#include "graphcap/result.h"
