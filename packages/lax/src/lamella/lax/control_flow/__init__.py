"""Structured control flow that stays in the compiled program: cond, switch,
while_loop, fori_loop, scan, map, associative_scan, custom_root,
custom_linear_solve, platform_dependent. Each is a primitive carrying sub-jaxprs (or, for
associative_scan, a composition of primitives) with every transformation's
rule and a StableHLO lowering to `case` / `while`."""

from lamella.core.custom_batching import register_sequential_map
from lamella.lax.control_flow.associative_scan import associative_scan
from lamella.lax.control_flow.cond import cond, cond_p, switch
from lamella.lax.control_flow.loops import while_loop, while_p
from lamella.lax.control_flow.platform import platform_dependent, platform_index_p
from lamella.lax.control_flow.scan import fori_loop, map, scan, scan_p
from lamella.lax.control_flow.solves import custom_linear_solve, custom_root, linear_solve_p

__all__ = ["associative_scan", "cond", "cond_p", "custom_linear_solve", "custom_root",
           "fori_loop", "linear_solve_p", "map", "platform_dependent", "platform_index_p", "scan",
           "scan_p", "switch", "while_loop", "while_p"]

# `lamella.core.custom_batching.sequential_vmap` batches by looping with map.
register_sequential_map(map)
