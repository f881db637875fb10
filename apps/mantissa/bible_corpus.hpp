#pragma once
// The KJV corpus the `kjv` dataset trains on: the output of `bible Gen1:1-Rev22:21` (Debian's
// bible-kjv). The program lends this to the library (train::TrainerHooks::kjv_corpus), which
// caches the text and never starts a process itself.
#include <string>

namespace mantissa::app {

// The whole text; throws mantissa::Error naming the package when `bible` is missing or fails.
std::string bible_kjv_text();

}  // namespace mantissa::app
