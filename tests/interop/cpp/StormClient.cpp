// A ZeroC Ice 3.7 C++11 publisher and subscriber for the floe-storm interop tests
// (tests/interop/tests/storm.rs), with IceStorm's C++ API and the events of
// tests/interop/StormEvents.ice. Tick `seq` carries a payload of `size` bytes whose byte i
// is (seq + i) mod 256.
//
// Usage:
//   storm-client subscribe --manager PROXY --topic NAME --expect N [--size S]
//                [--proxy oneway|twoway|batch] [--qos k=v ...] [--timeout SECONDS]
//     Subscribes a StormEvents::Ticker servant (created topic if missing) with the proxy
//     mode and QoS given, prints "subscriber ready", waits for N ticks (and a little longer
//     for extra ones), checks they are ticks 0..N-1 exactly once, in order, with the
//     expected payloads, prints "received N in order" or "BAD ...", unsubscribes and exits
//     (0 only when all was right).
//   storm-client publish --manager PROXY --topic NAME --count N [--size S]
//                [--mode oneway|twoway|batch] [--flush-every K]
//     Sends ticks 0..N-1 through the topic's publisher (batched ones flushed every K and at
//     the end) and prints "published N".
// Ice properties (--Ice.X=Y) are accepted too.
#include <Ice/Ice.h>
#include <IceStorm/IceStorm.h>
#include <StormEvents.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std;

namespace
{

string option(const vector<string>& args, const string& name, const string& fallback)
{
    for(size_t i = 0; i + 1 < args.size(); ++i)
    {
        if(args[i] == name)
        {
            return args[i + 1];
        }
    }
    return fallback;
}

StormEvents::Bytes payloadOf(int seq, size_t size)
{
    StormEvents::Bytes payload(size);
    for(size_t i = 0; i < size; ++i)
    {
        payload[i] = static_cast<Ice::Byte>((static_cast<size_t>(seq) + i) & 0xff);
    }
    return payload;
}

class TickerI : public StormEvents::Ticker
{
public:
    explicit TickerI(size_t size) : _size(size) {}

    void tick(int seq, StormEvents::Bytes payload, const Ice::Current&) override
    {
        lock_guard<mutex> lock(_mutex);
        _seqs.push_back(seq);
        if(payload != payloadOf(seq, _size))
        {
            ++_badPayloads;
        }
        _cond.notify_all();
    }

    // Waits until `n` ticks came or `limit` passed.
    void waitFor(size_t n, chrono::milliseconds limit)
    {
        unique_lock<mutex> lock(_mutex);
        _cond.wait_for(lock, limit, [&] { return _seqs.size() >= n; });
    }

    pair<vector<int>, int> result()
    {
        lock_guard<mutex> lock(_mutex);
        return make_pair(_seqs, _badPayloads);
    }

private:
    const size_t _size;
    mutex _mutex;
    condition_variable _cond;
    vector<int> _seqs;
    int _badPayloads = 0;
};

shared_ptr<IceStorm::TopicPrx> topicOf(const shared_ptr<Ice::Communicator>& communicator,
                                       const vector<string>& args)
{
    auto manager = Ice::checkedCast<IceStorm::TopicManagerPrx>(
        communicator->stringToProxy(option(args, "--manager", "")));
    if(!manager)
    {
        throw runtime_error("not a topic manager");
    }
    const string name = option(args, "--topic", "");
    try
    {
        return manager->retrieve(name);
    }
    catch(const IceStorm::NoSuchTopic&)
    {
        try
        {
            return manager->create(name);
        }
        catch(const IceStorm::TopicExists&)
        {
            return manager->retrieve(name);
        }
    }
}

int subscribe(const shared_ptr<Ice::Communicator>& communicator, const vector<string>& args)
{
    const size_t expect = stoul(option(args, "--expect", "0"));
    const size_t size = stoul(option(args, "--size", "16"));
    const string mode = option(args, "--proxy", "oneway");
    const int timeout = stoi(option(args, "--timeout", "20"));
    IceStorm::QoS qos;
    for(size_t i = 0; i + 1 < args.size(); ++i)
    {
        if(args[i] == "--qos")
        {
            const string kv = args[i + 1];
            const auto eq = kv.find('=');
            if(eq == string::npos)
            {
                throw runtime_error("--qos wants key=value");
            }
            qos[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
    }
    auto adapter = communicator->createObjectAdapterWithEndpoints("Subscriber", "tcp -h 127.0.0.1");
    auto servant = make_shared<TickerI>(size);
    auto proxy = adapter->addWithUUID(servant);
    adapter->activate();
    if(mode == "oneway")
    {
        proxy = proxy->ice_oneway();
    }
    else if(mode == "batch")
    {
        proxy = proxy->ice_batchOneway();
    }
    else if(mode != "twoway")
    {
        throw runtime_error("unknown proxy mode " + mode);
    }
    auto topic = topicOf(communicator, args);
    auto publisher = topic->subscribeAndGetPublisher(qos, proxy);
    if(!publisher)
    {
        throw runtime_error("no per-subscriber publisher");
    }
    cout << "subscriber ready" << endl;
    servant->waitFor(expect, chrono::seconds(timeout));
    this_thread::sleep_for(chrono::milliseconds(300)); // extra (duplicate) ticks come now
    auto result = servant->result();
    topic->unsubscribe(proxy);
    const vector<int>& seqs = result.first;
    bool inOrder = seqs.size() == expect;
    size_t firstWrong = seqs.size();
    for(size_t i = 0; i < seqs.size(); ++i)
    {
        if(seqs[i] != static_cast<int>(i))
        {
            inOrder = false;
            firstWrong = i;
            break;
        }
    }
    if(inOrder && result.second == 0)
    {
        cout << "received " << expect << " in order" << endl;
        return 0;
    }
    cout << "BAD got " << seqs.size() << " ticks of " << expect << ", first out of place at " << firstWrong
         << ", bad payloads " << result.second << endl;
    return 1;
}

int publish(const shared_ptr<Ice::Communicator>& communicator, const vector<string>& args)
{
    const int count = stoi(option(args, "--count", "0"));
    const size_t size = stoul(option(args, "--size", "16"));
    const string mode = option(args, "--mode", "oneway");
    const int flushEvery = stoi(option(args, "--flush-every", "100"));
    auto topic = topicOf(communicator, args);
    auto publisher = topic->getPublisher();
    if(!publisher)
    {
        throw runtime_error("no publisher");
    }
    shared_ptr<StormEvents::TickerPrx> ticker;
    if(mode == "oneway")
    {
        ticker = Ice::uncheckedCast<StormEvents::TickerPrx>(publisher->ice_oneway());
    }
    else if(mode == "twoway")
    {
        ticker = Ice::uncheckedCast<StormEvents::TickerPrx>(publisher->ice_twoway());
    }
    else if(mode == "batch")
    {
        ticker = Ice::uncheckedCast<StormEvents::TickerPrx>(publisher->ice_batchOneway());
    }
    else
    {
        throw runtime_error("unknown publish mode " + mode);
    }
    for(int seq = 0; seq < count; ++seq)
    {
        ticker->tick(seq, payloadOf(seq, size));
        if(mode == "batch" && flushEvery > 0 && seq % flushEvery == flushEvery - 1)
        {
            ticker->ice_flushBatchRequests();
        }
    }
    if(mode == "batch")
    {
        ticker->ice_flushBatchRequests();
    }
    cout << "published " << count << endl;
    return 0;
}

}

int main(int argc, char* argv[])
{
    try
    {
        Ice::CommunicatorHolder ich(argc, argv);
        // The holder took the --Ice.* properties out of argv.
        auto args = Ice::argsToStringSeq(argc, argv);
        if(args.size() < 2)
        {
            cerr << "usage: storm-client subscribe|publish [options]" << endl;
            return 2;
        }
        const string role = args[1];
        if(role == "subscribe")
        {
            return subscribe(ich.communicator(), args);
        }
        if(role == "publish")
        {
            return publish(ich.communicator(), args);
        }
        cerr << "unknown role " << role << endl;
        return 2;
    }
    catch(const exception& e)
    {
        cerr << "storm-client: " << e.what() << endl;
        return 1;
    }
}
