// Sift: the compiler library users import.
//
// `import Sift` brings in every compiler stage. Each stage is its own module
// and sees only the stages before it (README.md, "How it works").

@_exported import SiftChecking
@_exported import SiftMemory
@_exported import SiftModel
@_exported import SiftOptimizer
@_exported import SiftSQL
@_exported import SiftSyntax
@_exported import SiftTree
@_exported import SiftValues
