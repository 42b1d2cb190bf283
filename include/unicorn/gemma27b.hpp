// Gemma 3 27B — the entry header our first user asked for (same as gemma3_27b.hpp).
#pragma once
#include "unicorn/gemma3_27b.hpp"
