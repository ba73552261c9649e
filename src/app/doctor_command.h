// `dlq-archive doctor`: runs the checks of app/doctor.h against the real
// settings, credentials, SQS and S3, and prints the report (text or JSON).
#pragma once

namespace dlq {

struct Command;
// The `doctor` entry of the command line (app/command.h). Exit code 0 when
// every check passed, 1 when one failed.
Command DoctorCommand();

}  // namespace dlq
