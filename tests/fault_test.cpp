// core/fault: a malformed BIASLAB_FAULT is a ConfigError naming the variable.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/errors.h"
#include "core/fault.h"

using namespace biaslab;

TEST(Fault, MalformedEnvironmentIsAConfigErrorNamingTheVariable) {
  for (const char* bad : {"bogus", "kill_after_step", "kill_after_step:x", "kill_after_stp:3", "nan_loss_at_step:-1",
                          "sigterm_after_step:3,oops:1"}) {
    ::setenv("BIASLAB_FAULT", bad, 1);
    try {
      fault::check_environment();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("BIASLAB_FAULT='" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
  ::setenv("BIASLAB_FAULT", "kill_after_step:3,sigterm_after_step:10", 1);
  EXPECT_NO_THROW(fault::check_environment());
  ::unsetenv("BIASLAB_FAULT");
  EXPECT_NO_THROW(fault::check_environment());
}
