/*===- NoSymbols.c - A shared object that is not an artifact ------*- C -*-===//
 *
 * A valid ELF shared object without any of the artifact symbols.
 *
 *===----------------------------------------------------------------------===*/

int not_an_artifact(void) { return 42; }
