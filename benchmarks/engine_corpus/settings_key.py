"""The effective lowering settings, old (module globals) or new (options), as a short tag."""
import hashlib


def settings_tag(options=None):
    try:
        from newtonad.ad.engine import options as opt_mod  # new layout
        o = options if options is not None else opt_mod.LoweringOptions.current()
        vals = (o.row_block, o.row_block_bytes, o.row_block_min_blocks, o.parallel_min_iterations,
                o.parallel_threads, o.cheap_launch, o.unroll, o.unroll_statements,
                o.parallel_chunks, o.parallel_workqueue_factor)
    except ImportError:
        from newtonad.ad.engine import numba_codegen as g
        from newtonad.ad.engine import numba_plan as p
        vals = (p.ROW_BLOCK, p.ROW_BLOCK_BYTES, p.ROW_BLOCK_MIN_BLOCKS, g.PARALLEL_MIN_ITERATIONS,
                g.parallel_threads(), g.cheap_launch(), g.UNROLL, g.UNROLL_STATEMENTS,
                g.PARALLEL_CHUNKS, g.PARALLEL_WORKQUEUE_FACTOR)
    return hashlib.blake2b(repr(vals).encode(), digest_size=4).hexdigest(), vals


def save(outdir, name, src):
    import os
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, name + ".py"), "w") as f:
        f.write(src)
