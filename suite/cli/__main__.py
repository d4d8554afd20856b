"""`python -m suite.cli`: the aclnn-conform command."""
import sys

from suite.cli.main import main

sys.exit(main())
