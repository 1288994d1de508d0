//===- Translations.h - tv importers and exporters --------------*- C++ -*-===//
#ifndef TRAINVERIFY_TRANSLATE_TRANSLATIONS_H
#define TRAINVERIFY_TRANSLATE_TRANSLATIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tv {
/// Registers every tv import and export with mlir-translate's registry.
void registerTVTranslations();
/// --import-shard-partition (ShardImport.cpp).
void registerShardImport();
/// The translations registerTVTranslations registers, by flag name.
llvm::ArrayRef<llvm::StringRef> tvTranslationNames();
} // namespace mlir::tv

#endif
