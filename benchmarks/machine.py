"""Describe the machine a benchmark ran on (printed with every figure)."""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    import engine  # noqa: F401  (sets the OpenMP wait policy before numba starts its threads)
    import numba
    import numpy

    return {
        "platform": platform.platform(),
        "load_average": os.getloadavg()[0],
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "numba": numba.__version__,
        "numpy": numpy.__version__,
    }


def describe() -> str:
    m = machine_info()
    return (f"{m['cpu']}, {m['cores']} cores, numba {m['numba']} ({m['numba_threads']} threads), "
            f"numpy {m['numpy']}, Python {m['python']}, {m['platform']}")
