def greet(name):
    return "Helo, " + name + "!"


if __name__ == "__main__":
    print(greet("world"))
