//===- Semantics.cpp - evaluating an op through its interfaces ------------===//
#include "TrainVerify/Semantics/Semantics.h"
#include "TrainVerify/Semantics/Evaluator.h"

using namespace mlir;
using namespace mlir::tv;

bool mlir::tv::isCollectiveOp(Operation *op) {
  return isa<CollectiveOpInterface>(op) && !isa<ChunkOp>(op);
}

bool mlir::tv::isLocalComputeOp(Operation *op) {
  return isa<EvaluableOpInterface>(op);
}

static std::string noSemantics(Operation *op, StringRef what) {
  return ("no " + what + " for op '" + op->getName().getStringRef() + "'")
      .str();
}

template <typename D>
std::optional<std::string> mlir::tv::evalLocalOp(
    D &d, Operation *op, ArrayRef<const Tensor<typename D::V> *> inputs,
    SmallVectorImpl<Tensor<typename D::V>> &results, const RankEnv &env) {
  auto evaluable = dyn_cast<EvaluableOpInterface>(op);
  if (!evaluable)
    return noSemantics(op, "semantics");
  Evaluator<D> e{d, env, op, inputs, results};
  if constexpr (std::is_same_v<D, SymDomain>)
    return evaluable.evaluateSymbolic(e);
  else if constexpr (std::is_same_v<D, ExactDomain>)
    return evaluable.evaluateExact(e);
  else
    return evaluable.evaluateConcrete(e);
}

template <typename D>
std::optional<std::string>
mlir::tv::evalCollective(D &d, Operation *op,
                         ArrayRef<const Tensor<typename D::V> *> in,
                         std::vector<Tensor<typename D::V>> &out) {
  out.clear();
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  if (!collective)
    return noSemantics(op, "collective semantics");
  RankEnv env;
  SmallVector<Tensor<typename D::V>> results;
  Evaluator<D> e{d, env, op, in, results};
  std::optional<std::string> err;
  if constexpr (std::is_same_v<D, SymDomain>)
    err = collective.evaluateGroupSymbolic(e);
  else if constexpr (std::is_same_v<D, ExactDomain>)
    err = collective.evaluateGroupExact(e);
  else
    err = collective.evaluateGroupConcrete(e);
  out.assign(std::make_move_iterator(results.begin()),
             std::make_move_iterator(results.end()));
  return err;
}

template std::optional<std::string> mlir::tv::evalLocalOp<SymDomain>(
    SymDomain &, Operation *, ArrayRef<const Tensor<sym::TermId> *>,
    SmallVectorImpl<Tensor<sym::TermId>> &, const RankEnv &);
template std::optional<std::string> mlir::tv::evalLocalOp<ConcreteDomain>(
    ConcreteDomain &, Operation *, ArrayRef<const Tensor<double> *>,
    SmallVectorImpl<Tensor<double>> &, const RankEnv &);
template std::optional<std::string>
mlir::tv::evalCollective<SymDomain>(SymDomain &, Operation *,
                                    ArrayRef<const Tensor<sym::TermId> *>,
                                    std::vector<Tensor<sym::TermId>> &);
template std::optional<std::string>
mlir::tv::evalCollective<ConcreteDomain>(ConcreteDomain &, Operation *,
                                         ArrayRef<const Tensor<double> *>,
                                         std::vector<Tensor<double>> &);
template std::optional<std::string> mlir::tv::evalLocalOp<ExactDomain>(
    ExactDomain &, Operation *, ArrayRef<const Tensor<ExactValue> *>,
    SmallVectorImpl<Tensor<ExactValue>> &, const RankEnv &);
template std::optional<std::string>
mlir::tv::evalCollective<ExactDomain>(ExactDomain &, Operation *,
                                      ArrayRef<const Tensor<ExactValue> *>,
                                      std::vector<Tensor<ExactValue>> &);
