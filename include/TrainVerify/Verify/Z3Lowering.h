//===- Z3Lowering.h - terms to Z3 expressions -------------------*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_Z3LOWERING_H
#define TRAINVERIFY_VERIFY_Z3LOWERING_H

#include "TrainVerify/Semantics/Term.h"

#include <map>
#include <optional>
#include <z3++.h>

namespace mlir::tv {

/// Lowers normalized terms to Z3 over the reals: variables become constants
/// (Int for ids, converted where they meet reals), uninterpreted functions
/// become Z3 functions, inverses become divisions, max and index selection
/// become if-then-else. Only for code built with exceptions.
class Z3Lowering {
public:
  Z3Lowering(z3::context &ctx, const sym::TermContext &terms)
      : ctx(ctx), terms(terms) {}
  z3::expr term(sym::TermId t);
  /// `t` as a `width`-bit vector: the term's value modulo 2^width, with
  /// integer operations lowered to bit-vector ones (docs/integers.md).
  z3::expr bv(sym::TermId t, unsigned width);
  /// The Z3 constant of variable `v` (created on first use).
  z3::expr var(int64_t v);
  bool hasVar(int64_t v) const { return vars.count(v) || bvVars.count(v); }
  /// Lower `max` as an uninterpreted function of its arguments instead of
  /// its if-then-else: a weaker theory (an unsat answer still proves), and
  /// far easier where the maxima only need to cancel (a max-subtracted
  /// loss).
  bool opaqueMax = false;

private:
  z3::expr atom(sym::AtomId a);
  z3::expr bvAtom(sym::AtomId a, unsigned width);
  /// A term that bit-vector lowering does not read directly: its real value
  /// (an integer) converted.
  z3::expr bvOfReal(z3::expr real, unsigned width);
  /// The uninterpreted real function `name` applied to the terms.
  z3::expr apply(const std::string &name, llvm::ArrayRef<sym::TermId> operands);
  z3::context &ctx;
  const sym::TermContext &terms;
  std::map<sym::TermId, z3::expr> termCache;
  std::map<sym::AtomId, z3::expr> atomCache;
  std::map<int64_t, z3::expr> vars;
  /// Variables first met as bit-vectors: their integer reading (`vars`) is
  /// the vector's signed value.
  std::map<int64_t, z3::expr> bvVars;
  std::map<std::pair<sym::TermId, unsigned>, z3::expr> bvTermCache;
  std::map<std::pair<sym::AtomId, unsigned>, z3::expr> bvAtomCache;
  std::map<std::string, z3::func_decl> fns;
};

} // namespace mlir::tv

#endif
