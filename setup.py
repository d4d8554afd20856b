"""What pyproject.toml cannot say: the case files and goldens travel in the package.

The repository keeps them at its top level (cases/, golden/); a built wheel (`pip install .`,
`pip install git+...`, `python -m pip wheel .`) carries them as suite/data/cases and suite/data/golden,
which suite/common/home.py finds, so an installed copy runs from any folder with no environment
variable. An editable install reads them where they are (the checkout). Everything else is in
pyproject.toml."""
from setuptools import find_packages, setup

DATA = {"suite.data.cases": "cases", "suite.data.golden": "golden"}

setup(
    packages=find_packages(include=["suite*"]) + list(DATA),
    package_dir=DATA,
    package_data={"suite.data.cases": ["*.yaml", "families/*.yaml"], "suite.data.golden": ["*.json", "*/*.npz"]},
)
