// volume_test.cc -- the sizes of the tests of volume (test_util.h): a
// test that asks for one outside a *VolumeTest suite, which the plain run
// (run_volume.sh) would never run whole, fails.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace {

TEST(VolumeSuiteTest, VolumeOutsideAVolumeSuiteFails) {
  EXPECT_NONFATAL_FAILURE(gt_test::Volume(2, 1), "must be in a suite whose name ends in VolumeTest");
}

TEST(VolumeSuiteVolumeTest, VolumeIsTheBuildsSize) {
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_EQ(gt_test::Volume(2, 1), 1);
#else
  EXPECT_EQ(gt_test::Volume(2, 1), 2);
#endif
}

}  // namespace
