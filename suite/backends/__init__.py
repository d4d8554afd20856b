"""Built-in backends; each is imported only when a user names it. Beside them: the SoC table (soc)
and the CANN toolkit's discovery on disk (cann), which the aclnn backend and the doctor share.

May import: suite.common, suite.contract, suite.values, suite.ops (what a backend needs to run a call).
"""
