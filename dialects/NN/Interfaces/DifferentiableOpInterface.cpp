//===- DifferentiableOpInterface.cpp - Reverse-mode AD hook ---------------===//
//
// Generated definitions of the interface every differentiable nn op
// implements.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Interfaces/DifferentiableOpInterface.h"

#include "dialects/NN/Interfaces/DifferentiableOpInterface.cpp.inc"
