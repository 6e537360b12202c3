# source: https://github.com/pytorch/tutorials/blob/main/beginner_source/introyt/tensors_deeper_tutorial.py
# edits: block "NumPy Bridge" only (plus `import torch`); prose dropped
import torch
import numpy as np

numpy_array = np.ones((2, 3))
print(numpy_array)

pytorch_tensor = torch.from_numpy(numpy_array)
print(pytorch_tensor)

pytorch_rand = torch.rand(2, 3)
print(pytorch_rand)

numpy_rand = pytorch_rand.numpy()
print(numpy_rand)

numpy_array[1, 1] = 23
print(pytorch_tensor)

pytorch_rand[1, 1] = 17
print(numpy_rand)
