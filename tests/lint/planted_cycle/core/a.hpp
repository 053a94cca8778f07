// a planted cycle: a.cpp -> b.hpp, b.cpp -> a.hpp (the checker must fail here)
#pragma once
