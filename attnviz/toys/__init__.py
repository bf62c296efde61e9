"""Small toy tasks and experiments that the notebooks train live on the CPU.

Each module is one task: its data generator, its tiny model and its training
loop, seeded and small enough for a few seconds of CPU. Torch only.
"""
