"""Programs pickle by their primitives' names, so they can go to other processes."""

import pickle
import subprocess
import sys

import numpy as np
from scipy.optimize import rosen

import newtonad as nad


def test_a_program_survives_pickling_in_this_process():
    program = nad.trace(rosen, np.ones(3))
    again = pickle.loads(pickle.dumps(program))
    assert again == program and str(again) == str(program)


def test_a_program_unpickled_in_a_fresh_process_is_the_same_program(tmp_path):
    program = nad.trace(rosen, np.ones(3))
    path = tmp_path / "program.pkl"
    path.write_bytes(pickle.dumps(program))
    out = subprocess.run([sys.executable, "-c",
                          f"import pickle; print(pickle.loads(open({str(path)!r}, 'rb').read()))"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.strip() == str(program).strip()


def test_pickling_does_not_carry_the_registry():
    # a program of a few steps pickles to a few kB, not to every primitive there is
    assert len(pickle.dumps(nad.trace(rosen, np.ones(3)))) < 2000
