// Small string helpers shared by the libraries.
#pragma once

#include <string>
#include <string_view>

namespace tgr::util {

// The parts (anything a std::string_view is made from) joined into one
// string, appended left to right without temporaries (GCC 12's -Wrestrict
// misfires on `"literal" + std::string&&`).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s.append(std::string_view(parts)), ...);
  return s;
}

}  // namespace tgr::util
