"""Pipeline stages: one module per dvc.yaml stage, each exposing `run(params, out_dir, ...)`."""
