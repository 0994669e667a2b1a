// The Catch2 main, alone in its own file: the single header is slow to
// compile, so it is built once and linked into every test program.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
