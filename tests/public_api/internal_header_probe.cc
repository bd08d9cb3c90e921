// Must not compile: an internal header, from outside src/ (see CMakeLists.txt).
#include "engine/scheduler.h"

int main() { return 0; }
