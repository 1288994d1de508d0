//===- TestStages.h - stages shared by the unit tests -----------*- C++ -*-===//
#ifndef TV_UNITTESTS_TESTSTAGES_H
#define TV_UNITTESTS_TESTSTAGES_H

#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <string>

namespace tvtest {
using namespace mlir;
using namespace mlir::tv;
/// A row-parallel linear over two ranks; `reduce` chooses the collective
/// that combines the partial sums.
inline std::string stageText(const std::string &reduce) {
  return R"(
  tv.mesh @mesh axes ["tp"] sizes [2]
  tv.stage @s assumes [#tv.lineage<"a"[0:4, 0:8] = ["a":0]>, #tv.lineage<"a"[0:4, 8:16] = ["a":1]>, #tv.lineage<"w"[0:6, 0:8] = ["w":0]>, #tv.lineage<"w"[0:6, 8:16] = ["w":1]>] guarantees [#tv.lineage<"y"[0:4, 0:6] = ["y":0] | ["y":1]>] {
    tv.spec @spec {
      %a = tv.input "a" : tensor<4x16xf32>
      %w = tv.input "w" : tensor<6x16xf32>
      %y = tv.linear %a, %w : (tensor<4x16xf32>, tensor<6x16xf32>) -> tensor<4x6xf32>
      tv.output "y", %y : tensor<4x6xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0, 1] {
        %a = tv.input "a" : tensor<4x8xf32>
        %w = tv.input "w" : tensor<6x8xf32>
        %p = tv.linear %a, %w : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
        )" + reduce + R"(
        tv.output "y", %y : tensor<4x6xf32>
      }
    }
  })";
}

struct StageFixture : ::testing::Test {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  StageOp load(const std::string &text) {
    ctx.loadDialect<TVDialect>();
    module = parseSourceString<ModuleOp>(text, &ctx);
    return module ? *module->getOps<StageOp>().begin() : StageOp();
  }
};
/// A stage parsed into a context of its own (to compare stages in a test).
struct OwnStage {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  explicit OwnStage(const std::string &text) {
    ctx.loadDialect<TVDialect>();
    module = parseSourceString<ModuleOp>(text, &ctx);
  }
  StageOp get() {
    return module ? *module->getOps<StageOp>().begin() : StageOp();
  }
};
} // namespace tvtest

#endif
