# a missing dict key is a KeyError
# expect-error: KeyError
import torch

params = {"w": torch.ones(2)}
w = params["w"]
b = params["b"]
