#include "bible_corpus.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::app {

std::string bible_kjv_text() {
  FILE* p = ::popen("bible Gen1:1-Rev22:21 2>/dev/null", "r");
  std::string text;
  if (p != nullptr) {
    char buf[1 << 16];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
    const int status = ::pclose(p);
    // The shell's 127 is "not found": as no text. Any other failure after text is its own
    // error (a partial corpus must not be trained on).
    if (status != 0 && !text.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 127)) {
      throw Error("KJV corpus: the `bible` program failed (" +
                  (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                     : std::string("ended by a signal")) +
                  ") after " + std::to_string(text.size()) + " bytes of text");
    }
    if (status != 0) text.clear();
  }
  if (text.empty()) {
    throw Error(
        "KJV corpus: the `bible` program gave no text (install Debian's bible-kjv: "
        "apt-get install bible-kjv, or run scripts/install-deps.sh)");
  }
  return text;
}

}  // namespace mantissa::app
