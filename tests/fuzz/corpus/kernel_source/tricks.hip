#inc\
lude /* x */ <stdio.h>
%:include "a.h"
const char* s = "#include <x>"; // #include <y>
#if __has_include(<z>)
#endif
