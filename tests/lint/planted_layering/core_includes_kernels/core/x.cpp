// a planted layering violation: core/ includes kernels/ (the layering lint must fail here)
#include "core/x.hpp"
#include "kernels/y.hpp"
