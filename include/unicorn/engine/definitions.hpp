// unicorn/engine/definitions.hpp — EngineCore's code, one file per job (the
// list in core.hpp's first comment): included at the end of core.hpp when
// header-only, else by unicorn/separate_compilation.hpp alone (base/linkage.hpp).
#pragma once

#include "unicorn/engine/core.hpp"
#include "unicorn/engine/create.hpp"
#include "unicorn/engine/forward.hpp"
#include "unicorn/engine/ops.hpp"
#include "unicorn/engine/profile.hpp"
#include "unicorn/engine/sessions.hpp"
#include "unicorn/engine/teacher_forcing.hpp"
#include "unicorn/engine/upload.hpp"
