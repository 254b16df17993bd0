from tinygrad import Tensor
N = 1024
a = Tensor.rand(N, N)
b = Tensor.rand(N, N)
c = (a.dot(b)).realize()
print(c.numpy())
