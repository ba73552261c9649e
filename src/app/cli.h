// The dlq-archive command line. RunCli parses argv, runs one command and
// returns the process exit code:
//   0 success; 1 failure (with a message on stderr); 2 usage error;
//   3 partial: some selected messages were not archived and deleted
//   (they remain in the DLQ; nothing was lost); 130 stopped by a signal.
#pragma once

namespace dlq {

int RunCli(int argc, char** argv);

}  // namespace dlq
