"""pip install . -- the cleave Python package (docs/user/python.md).

The native parts come from the project's CMake build, driven here through
scripts/build.sh: the build directory (CLEAVE_BUILD_DIR, default build/) is
configured if needed and the package's targets are brought up to date, then
its install component `python` (python/CMakeLists.txt) is copied into the
package: the extension, libcleave_runtime and the cleave-compile and
cleave-check binaries. Nothing is downloaded: setuptools and wheel are
Debian's (python3 -m venv --system-site-packages).
"""

import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("CLEAVE_BUILD_DIR", "build")
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
TARGETS = ["_cleave", "cleave-compile", "cleave-check"]


class BuildWithCMake(build_py):
    """build_py plus the native files of the CMake install component."""

    def run(self):
        super().run()
        build = BUILD
        env = dict(os.environ, CLEAVE_BUILD_DIR=build)
        subprocess.check_call(["bash", os.path.join(ROOT, "scripts",
                                                    "build.sh")] + TARGETS,
                              cwd=ROOT, env=env)
        package = os.path.join(self.build_lib, "cleave")
        with tempfile.TemporaryDirectory() as staging:
            subprocess.check_call(["cmake", "--install", build, "--component",
                                   "python", "--prefix", staging])
            # A wheel holds files, not links: the runtime is kept under its
            # soname (libcleave_runtime.so.N), the name the loader asks for.
            for dirpath, _, files in os.walk(staging):
                for name in files:
                    source = os.path.join(dirpath, name)
                    if os.path.islink(source):
                        real = os.path.realpath(source)
                        os.unlink(source)
                        shutil.copy2(real, source)
                        os.unlink(real)
            shutil.copytree(staging, package, dirs_exist_ok=True)


class NativeDistribution(Distribution):
    """The wheel holds native code for this platform and Python."""

    def has_ext_modules(self):
        return True


setup(
    name="cleave",
    version="0.1.0",
    description="Cleave: a training-graph compiler with gradient "
                "accumulation done by the compiler",
    packages=["cleave"],
    package_dir={"": "python"},
    python_requires=">=3.9",
    install_requires=["numpy"],
    distclass=NativeDistribution,
    cmdclass={"build_py": BuildWithCMake},
    zip_safe=False,
    # setuptools' own staging goes inside the CMake build directory, not
    # into a second top-level build/ of its own making.
    options={"build": {"build_base": os.path.join(BUILD, "python-package")}},
)
