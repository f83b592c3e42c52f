"""The parts of the differential fuzzer behind tests/fuzz/gen.py (its command line, worker
processes and campaigns): the prelude every program runs with (prelude), programs and the
opt-in generator features (program), the generator of program text (generator: names,
expressions, program assembly; statements: the statement kinds), running a program eagerly,
jitted and captured and comparing what it did (harness), and shrinking a failing program
(minimize)."""
