// horovodrun's options that hvdrun refuses, each with the reason: the MPI,
// jsrun and NCCL ones, and features hvd does not have yet (with the issue
// that brings them). Refusing with a reason, rather than "unknown option",
// tells a Horovod user at once what to change.
#pragma once

#include <string>

namespace hvd::launcher {

struct RefusedOption {
  const char* name;  // as horovodrun spells it
  const char* reason;
};

// The refusal for `name` ("--mpi"), or nullptr when hvdrun does not refuse
// it.
const RefusedOption* FindRefusedOption(const std::string& name);

// Every refused option, for suggestions ("did you mean") and the tests.
const RefusedOption* RefusedOptionsBegin();
const RefusedOption* RefusedOptionsEnd();

}  // namespace hvd::launcher
