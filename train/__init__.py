"""SB3 training, head-to-head evaluation, paper reproduction and the ``schedgym`` command line.

How the package is layered (``tests/test_import_graph.py`` holds it, counting every import,
function-level ones included)::

    schedgym.core  <-  schedgym.envs  <-  schedgym.agents  <-  schedgym.train

An arrow points from a layer to one that may import it: ``core`` imports no other layer,
``envs`` only ``core``, ``agents`` ``core`` and ``envs`` (never ``train``: a saved model is
checked and played without the training code), ``train`` any of them. No module imports
another that imports it back, however indirectly.

Inside ``train`` there are two kinds of module:

- the *command modules*, one per subcommand, each exposing ``add_parser(subparsers)`` and
  ``main(args)``: :mod:`.compare`, :mod:`.training` (``train``), :mod:`.reproduce`,
  :mod:`.report`, :mod:`.bench`, and :mod:`.cli`, which wires them together (and is
  ``schedgym list``). Only :mod:`.cli` imports a command module; a command module's help text is
  its docstring. A few library names are re-exported by the command module they used to live
  in (``schedgym.train.training.train``, ``TrainConfig``, ``TrainResult``;
  ``schedgym.train.compare.run_compare``), for the code that imports them from there.
- the *libraries* below them, each with one job:

  - training: :mod:`.train_config` (the run's knobs), :mod:`.trainer` (the loop),
    :mod:`.callbacks` (inside ``learn``: metrics, progress, limits, evaluation),
    :mod:`.train_report` (the progress lines and the closing line's stop reason),
    :mod:`.run_folder` (claims and resume checks), :mod:`.model_io` (the saved files),
    :mod:`.multiseed` (one run per seed), :mod:`.hyperparams` (rl-zoo3 configs),
    :mod:`.entity_training` and :mod:`.policies` (the entity policy), :mod:`.instances`
    (training on many instances);
  - sweeps: :mod:`.runspec` (a run's description), :mod:`.tasks` (its tasks),
    :mod:`.store` (its folder), :mod:`.backend` (where tasks run), :mod:`.sweep` (running the
    missing ones), :mod:`.preflight` (checks and warm-up before the first episode),
    :mod:`.head_to_head` (compare as a library), :mod:`.summary` (compare's table and files),
    :mod:`.experiments` and :mod:`.experiment_report` (reproduce as a library);
  - performance: :mod:`.bench_scale` (``schedgym bench scale``: cost and memory against size);
  - shared: :mod:`.runner` (one episode), :mod:`.tensorboard` (the tags), :mod:`.plots`,
    :mod:`.stats`, :mod:`.cli_options`, :mod:`.safe_yaml`, :mod:`.reaper`.
"""
