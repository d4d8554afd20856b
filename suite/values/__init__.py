"""The distributions a case's input values are drawn from (draw) and the value sets operators share
(sets): exactly representable in each dtype, the same bits on any machine.

May import: suite.common. Imported by the operator modules (suite/ops/) and everything above them.
"""
