// expect-error: 9 main: expected a package instance
// `main` must instantiate a package (V1Switch for v1model); an extern instance cannot be the program.
#include <core.p4>

extern Clock {
    Clock();
}

Clock() main;
