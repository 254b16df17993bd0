from tinygrad import Tensor, nn

class TinyNet:
    def __init__(self):
        self.l1 = Tensor.kaiming_uniform(784, 128)
        self.l2 = Tensor.kaiming_uniform(128, 10)

    def __call__(self, x: Tensor) -> Tensor:
        return x.flatten(1).dot(self.l1).relu().dot(self.l2)

model = TinyNet()
optim = nn.optim.Adam([model.l1, model.l2], lr=0.001)
x = Tensor.rand(32, 1, 28, 28)
y = Tensor.randint(32, high=10)
Tensor.training = True
for i in range(10):
    optim.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    optim.step()
    print(f"Step {i}, Loss: {loss.item()}")
