"""Profile-guided optimization: rules read a profile's evidence and propose rewrites; each rewrite (an FX
pass, or a documented compile option) is applied, checked for numerical agreement with the original,
measured, and kept only when it pays.

  python -m opprof.optimize examples/attention_block.py --allow-precision bf16 --tolerance 1e-2
  opprof optimize examples/attention_block.py            # the same, from the CLI

From Python: ``opprof.optimize.driver.optimize(Options(...))`` runs the loop;
``opprof.optimize.backend.make_backend`` (a torch.compile backend running chosen passes) and
``opprof.optimize.rewrites.apply`` are what saved code calls. The parts: rules (evidence -> candidates),
passes (the FX rewrites), rewrites (the catalog and how steps apply), numerics, measure, driver, report.
Importing this package imports no torch: the driver sets the compile caches before torch reads them.
"""
