# Warnings every Lumen target builds with. Kept in one place so modules stay uniform.
add_library(lumen_warnings INTERFACE)
target_compile_options(lumen_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wnon-virtual-dtor)
