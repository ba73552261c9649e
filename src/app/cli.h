// The dlq-archive command line. RunCli parses argv, runs one command and
// returns the process exit code:
//   0 success; 1 failure (with a message on stderr); 2 usage error (any bad
//   argument, option value, unknown option or command; the message names
//   it); 3 archived, but some deletes failed (the messages remain in the DLQ;
//   nothing was lost); 4 incomplete: selected messages were left in the DLQ;
//   130 stopped by a signal. --help, `help [COMMAND]` and --version exit 0.
#pragma once

namespace dlq {

int RunCli(int argc, char** argv);

}  // namespace dlq
