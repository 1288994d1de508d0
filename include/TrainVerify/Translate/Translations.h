//===- Translations.h - tv importers and exporters --------------*- C++ -*-===//
#ifndef TRAINVERIFY_TRANSLATE_TRANSLATIONS_H
#define TRAINVERIFY_TRANSLATE_TRANSLATIONS_H

namespace mlir::tv {
/// Registers every tv import and export with mlir-translate's registry.
void registerTVTranslations();
} // namespace mlir::tv

#endif
