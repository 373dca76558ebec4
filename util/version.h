// The version of tgr, in one place: CMake's project version plus `git
// describe` of the source tree at configure time (CMakeLists.txt). Every
// program prints it for --version; each run a database records stores it.
#pragma once

namespace tgr {

// "0.1.0 (git a88aa70-dirty)", or "0.1.0" when built outside a git checkout.
const char* version();

}  // namespace tgr
