"""Workload: the LSTM of examples/lstm.py as torch.compile sees it when Dynamo may trace RNN modules
(torch._dynamo.config.allow_rnn = True): Inductor then unrolls the recurrence, 64 steps x 2 layers, into
small FP32 GEMMs and pointwise kernels instead of one cuDNN call. This is the case the optimizer's rule
"recurrent layer unrolled into many small GEMMs" is for; its rewrite keeps the LSTM module on cuDNN.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lstm  # noqa: E402  (the model and its sizes)


def get_model_and_input(device: str | None = None):
    torch._dynamo.config.allow_rnn = True
    return lstm.get_model_and_input(device)
