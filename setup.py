"""The one thing pyproject.toml cannot say: the optional compiled scorer of memory/index.py.

It uses the C API of the standard library only. Without a C compiler (or Python's headers) the
install still succeeds, and the index uses its pure-Python search, which returns the same results.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """No fused multiply-add (GCC and clang contract `a + b * c` by default on some targets), so the
    compiled scores equal Python's bit for bit. MSVC does not contract under /fp:precise."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type != "msvc":
            for extension in self.extensions:
                extension.extra_compile_args.append("-ffp-contract=off")
        super().build_extensions()


setup(
    ext_modules=[Extension("nanohermes.memory._scorer", ["nanohermes/memory/_scorer.c"], optional=True)],
    cmdclass={"build_ext": BuildExt},
)
