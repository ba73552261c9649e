#include "app/cli.h"

int main(int argc, char** argv) { return dlq::RunCli(argc, argv); }
