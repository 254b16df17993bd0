from tinygrad import Device
print(Device.DEFAULT)
