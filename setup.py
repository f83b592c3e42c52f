"""Builds pijit._C with CMake (see CMakeLists.txt) and installs the pijit package."""
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if shutil.which("cmake") is None:
            raise RuntimeError("pijit needs CMake >= 3.18 to build: run scripts/setup_deps.sh")
        out_dir = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        tag = sysconfig.get_config_var("SOABI") or "py"
        build_dir = os.path.join(ROOT, "build", f"cmake-{tag}")
        os.makedirs(build_dir, exist_ok=True)
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(
            ["cmake", "-S", ROOT, "-B", build_dir, *gen,
             f"-DPython_EXECUTABLE={sys.executable}",
             f"-DPIJIT_OUTPUT_DIR={out_dir}",
             f"-DCMAKE_BUILD_TYPE={os.environ.get('PIJIT_BUILD_TYPE', 'Release')}",
             f"-DPIJIT_BUILD_TESTS={os.environ.get('PIJIT_BUILD_TESTS', 'ON')}",
             # The CUDA backend builds wherever cuda.h is found; PIJIT_CUDA=OFF leaves it out.
             *([f"-DPIJIT_CUDA={os.environ['PIJIT_CUDA']}"] if "PIJIT_CUDA" in os.environ else [])])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_C",
                               "-j", os.environ.get("PIJIT_JOBS", "2")])


setup(
    name="pijit",
    version="0.1.0",
    description="A CPython bytecode-capturing JIT for tensor code",
    packages=find_packages(include=["pijit", "pijit.*"]),
    ext_modules=[CMakeExtension("pijit._C")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.11,<3.14",
    install_requires=["numpy"],
    zip_safe=False,
)
