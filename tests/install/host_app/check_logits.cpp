// check_logits GOT REF TOLERANCE: compares two float32 LE logits files with the
// golden tests' measure (../compare_logits.hpp). No unicorn headers.
#include "compare_logits.hpp"

int main(int argc, char** argv) { return install_test::check_logits_main(argc, argv); }
